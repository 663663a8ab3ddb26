"""CSV export of a level's table: the rows and columns on screen, in the same order, every page."""

import csv
import io

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


def csv_text(table: tables.Table) -> str:
    """Every row of the table, in order, as CSV."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(csv_header(table))
    for row in table.all_rows:
        writer.writerow(csv_record(row, table))
    return buffer.getvalue()
