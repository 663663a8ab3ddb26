"""CSV export of a level's table: the rows and columns on screen, in the same order, every page.

Text that a spreadsheet would run as a formula (a cell starting with =, +, -, @, a tab or a carriage
return: a method named `=HYPERLINK(…)`, say) is written with a leading apostrophe, so it is shown as text.
A plain number (`-20.5`, `1e-05`) is left alone: it is a value, not a formula, and stays a number.
"""

import csv
import io
import re

from django.http import Http404, HttpResponse

from leaderboard import table as tables
from leaderboard.models import Level
from leaderboard.views.params import BadQuery, parse_query
from leaderboard.views.serialize import csv_header, csv_record


def level_csv(request, number):
    try:
        query = parse_query(request.GET)
        table = tables.build_table(number, query, paginate=False)
    except BadQuery as bad:
        return HttpResponse(str(bad), status=400, content_type="text/plain; charset=utf-8")
    except Level.DoesNotExist as missing:
        raise Http404(str(missing)) from None
    response = HttpResponse(table.derive("csv", csv_text), content_type="text/csv; charset=utf-8")
    filename = f"kernelbench-L{number}-{table.view.slug}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


def neutralised(cell: str | None) -> str | None:
    """A cell as a spreadsheet may safely open it: formula-like text gets a leading apostrophe."""
    if isinstance(cell, str) and cell.startswith(FORMULA_START) and not NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def csv_text(table: tables.Table) -> str:
    """Every row of the table, in order, as CSV."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(csv_header(table))
    for row in table.all_rows:
        writer.writerow([neutralised(cell) for cell in csv_record(row, table)])
    return buffer.getvalue()
