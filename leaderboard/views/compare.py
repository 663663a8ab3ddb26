"""Head-to-head comparison of entries: `/compare/?entries=ID,ID[,…]`."""

from django.http import HttpResponseBadRequest


def compare(request):
    return HttpResponseBadRequest("not yet")
