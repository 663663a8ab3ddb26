"""An upload handler that stops an oversized bundle before it reaches memory or disk.

Django would otherwise spool a whole upload (a 1 GB one too) to a temporary file before any view could
look at its size. This handler runs first: a request whose declared length is over the limit is not
read at all, and a file is cut off the moment it passes the limit. The view then answers 413.
"""

from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

from leaderboard.submissions.archives import Limits

FORM_FIELDS_ALLOWANCE = 1024 * 1024
"""Bytes a request may carry beyond the bundle itself: the entry's form fields and multipart framing."""


def upload_limit() -> int:
    return Limits().max_upload_bytes


def too_large(request) -> int | None:
    """The size of an upload this handler refused, or None."""
    return getattr(request, "upload_too_large", None)


class BoundedUploadHandler(FileUploadHandler):
    """Refuses a request over the bundle limit unread, and cuts off a file that grows past it."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length > upload_limit() + FORM_FIELDS_ALLOWANCE:
            self.request.upload_too_large = content_length
            return QueryDict(encoding=encoding), MultiValueDict()  # nothing parsed, nothing read
        return None

    def receive_data_chunk(self, raw_data, start):
        if start + len(raw_data) > upload_limit():
            self.request.upload_too_large = start + len(raw_data)
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None
