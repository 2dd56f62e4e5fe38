"""cobalt's pages: the runs list, run detail, compare and trends, served by `cobalt serve` beside the
Dagster UI, and the same run or compare page as one self-contained HTML file (`cobalt report`).

    server = PagesServer(config, port=4001)
    url = server.start()                                   # http://127.0.0.1:4001, in a background thread
    write_report(config, "latest", Path("report.html"))    # works from file://
"""

from __future__ import annotations

from ._app import PagesServer, create_app
from ._proxy import DagsterProxy, create_proxy
from ._report import compare_report_html, run_report_html, write_report

__all__ = ["DagsterProxy", "PagesServer", "compare_report_html", "create_app", "create_proxy", "run_report_html",
           "write_report"]
