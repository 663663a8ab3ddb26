"""The change feed: `/feed.atom` (Atom) and `/changes/` (a page), both of `leaderboard.events`."""

from django.contrib.syndication.views import Feed
from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from leaderboard import events

FEED_ITEMS = 50
CHANGES_PER_PAGE = 50
KIND_LABELS = {
    "entry": "New entry",
    "run": "Verified run",
    "leader": "New #1",
    "curation": "Curation",
}


class ChangeFeed(Feed):
    """New entries, verified runs, new leaders and curation decisions, newest first."""

    feed_type = Atom1Feed
    title = "KernelBench leaderboard: changes"
    subtitle = "New entries, verified runs, a new #1 on a level and curation decisions with their reasons."
    author_name = "KernelBench leaderboard"

    def link(self):
        return reverse("leaderboard:changes")

    def feed_url(self):
        return reverse("leaderboard:feed")

    def items(self):
        return events.recent_events(FEED_ITEMS)

    def item_title(self, item: events.Event) -> str:
        return item.title

    def item_description(self, item: events.Event) -> str:
        return item.summary

    def item_link(self, item: events.Event) -> str:
        return item.url

    def item_guid(self, item: events.Event) -> str:
        return f"urn:kernelbench-leaderboard:{item.key}"

    item_guid_is_permalink = False

    def item_pubdate(self, item: events.Event):
        return item.when

    def item_updateddate(self, item: events.Event):
        return item.when

    def item_categories(self, item: events.Event):
        return [item.kind]


def changes(request):
    """Every event as a page, newest first, paginated."""
    page = Paginator(events.recent_events(), CHANGES_PER_PAGE).get_page(request.GET.get("page"))
    rows = [{"event": event, "label": KIND_LABELS[event.kind]} for event in page.object_list]
    return render(request, "leaderboard/changes.html", {"page": page, "rows": rows})
