"""Reading a leaderboard page back: its rows, cell values and provenance, for comparing with JSON and CSV."""

import csv
import io
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class PageCell:
    key: str
    value: str
    classes: str
    title: str
    links: list[str] = field(default_factory=list)
    text: str = ""


@dataclass
class PageRow:
    entry_id: int
    rank: str = ""
    cells: dict[str, PageCell] = field(default_factory=dict)


class BoardParser(HTMLParser):
    """Collects the rows of table#leaderboard with each value cell's data-key, data-value, title and links."""

    def __init__(self):
        super().__init__()
        self.rows: list[PageRow] = []
        self.headers: list[str] = []
        self.in_board = False
        self.cell: PageCell | None = None
        self.in_rank = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id") == "leaderboard":
            self.in_board = True
        if not self.in_board:
            return
        if tag == "th" and "data-key" in attrs:
            self.headers.append(attrs["data-key"])
        elif tag == "tr" and "data-entry-id" in attrs:
            self.rows.append(PageRow(int(attrs["data-entry-id"])))
        elif tag == "td" and self.rows:
            if "col-rank" in attrs.get("class", ""):
                self.in_rank = True
            elif "data-key" in attrs:
                self.cell = PageCell(
                    attrs["data-key"], attrs["data-value"], attrs["class"], attrs.get("title", "")
                )
                self.rows[-1].cells[self.cell.key] = self.cell
        elif tag == "a" and self.cell is not None:
            self.cell.links.append(attrs.get("href", ""))

    def handle_endtag(self, tag):
        if tag == "table" and self.in_board:
            self.in_board = False
        if tag == "td":
            self.cell = None
            self.in_rank = False

    def handle_data(self, data):
        if self.in_rank:
            self.rows[-1].rank += data.strip()
        elif self.cell is not None:
            self.cell.text += data


def page_rows(html: str) -> list[PageRow]:
    parser = BoardParser()
    parser.feed(html)
    return parser.rows


def page_headers(html: str) -> list[str]:
    parser = BoardParser()
    parser.feed(html)
    return parser.headers


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))
