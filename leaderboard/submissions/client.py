"""A small standard-library client of the submission API: upload a bundle, then follow its status.

Usable without Django:
``python -m leaderboard.submissions.client BUNDLE --server URL --token T --method NAME``.
"""

import argparse
import json
import logging
import mimetypes
import secrets
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

logger = logging.getLogger(__name__)

FIELDS = ("method", "method_kind", "backbone", "agent_models", "label", "data_source", "mode", "hardware",
          "notes", "suite", "team")  # fmt: skip
FINISHED = {"completed", "failed", "cancelled"}


class ApiError(Exception):
    """The server refused a request; `payload` is its JSON answer when there was one."""

    def __init__(self, status: int, payload: dict):
        self.status, self.payload = status, payload
        problems = payload.get("problems") or []
        message = payload.get("error") or f"HTTP {status}"
        super().__init__("\n".join([message, *(f"- {problem}" for problem in problems)]))


def multipart(fields: dict[str, str], file_field: str, path: Path) -> tuple[bytes, str]:
    """A multipart/form-data body with text fields and one file; returns (body, content type)."""
    boundary = "----kbl" + secrets.token_hex(16)
    parts = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    header = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{path.name}"\r\n'
        f"Content-Type: {kind}\r\n\r\n"
    )
    parts += [header.encode(), path.read_bytes(), f"\r\n--{boundary}--\r\n".encode()]
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def request(url: str, token: str, body: bytes | None = None, content_type: str = "") -> dict:
    """One API call; returns the JSON answer or raises ApiError."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    call = urllib.request.Request(url, data=body, headers=headers, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(call, timeout=120) as response:  # noqa: S310 - the user's own server URL
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        try:
            payload = json.loads(error.read())
        except ValueError:
            payload = {}
        raise ApiError(error.code, payload) from error


def submit(server: str, token: str, bundle: Path, fields: dict[str, str]) -> dict:
    """Upload a bundle; returns the API's answer (id, status_url, submissions)."""
    body, content_type = multipart({k: v for k, v in fields.items() if v}, "bundle", bundle)
    return request(server.rstrip("/") + "/api/submissions", token, body, content_type)


def status(server: str, token: str, status_url: str) -> dict:
    url = status_url if status_url.startswith("http") else server.rstrip("/") + status_url
    return request(url, token)


def wait(server: str, token: str, status_urls: list[str], interval: float = 2.0, timeout: float = 3600):
    """Poll until every submission is finished (or errored for good); yield each status as it changes."""
    deadline = time.monotonic() + timeout
    last: dict[str, tuple] = {}
    pending = list(status_urls)
    while pending and time.monotonic() < deadline:
        for url in list(pending):
            answer = status(server, token, url)
            key = (answer["status"], answer["done"], answer["total"], answer["reason"], answer.get("final"))
            if last.get(url) != key:
                last[url] = key
                yield answer
            if answer["status"] in FINISHED or (answer["status"] == "errored" and answer.get("final")):
                pending.remove(url)
        time.sleep(interval)


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(description="Submit a kernel bundle to a KernelBench leaderboard.")
    parse.add_argument("bundle", type=Path)
    parse.add_argument("--server", required=True)
    parse.add_argument("--token", required=True)
    parse.add_argument("--wait", action="store_true", help="Follow the submission until it finishes.")
    for name in FIELDS:
        parse.add_argument("--" + name.replace("_", "-"), dest=name, default="")
    parse.add_argument(
        "--public", action="store_true", help="Make the kernels public once verified (default: private)."
    )
    return parse


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parser().parse_args(argv)
    try:
        fields = {name: getattr(args, name) for name in FIELDS} | {"public": "true" if args.public else ""}
        answer = submit(args.server, args.token, args.bundle, fields)
        for item in answer["submissions"]:
            logger.info("submission %s (level %s): %s", item["id"], item["level"], item["status_url"])
        if args.wait:
            for state in wait(
                args.server, args.token, [item["status_url"] for item in answer["submissions"]]
            ):
                logger.info("#%s %s %s/%s %s", state["id"], state["status"], state["done"], state["total"],
                            state["reason"])  # fmt: skip
    except ApiError as error:
        logger.error("%s", error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
