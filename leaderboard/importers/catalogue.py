"""The seed catalogue (seed/catalogue.toml): method metadata, launch-post readings, data-source notes."""

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

CATALOGUE_PATH = Path(__file__).resolve().parent.parent / "seed" / "catalogue.toml"
ROW_DECORATIONS = re.compile(r"\s*(\(reproduce\)|\*)\s*$", re.IGNORECASE)
METHOD_FIELDS = (
    "kind",
    "organisation",
    "backbone",
    "agent_models",
    "arxiv_id",
    "paper_url",
    "code_url",
    "model_url",
    "description",
)


@dataclass(frozen=True)
class Catalogue:
    methods: dict[str, dict]  # lower-cased name or alias → method table
    launch_posts: dict[str, dict]  # model → reading
    data_sources: dict[str, dict]  # data_source tag → table

    def method(self, name: str) -> dict | None:
        return self.methods.get(name.lower())


@functools.cache
def load_catalogue(path: Path = CATALOGUE_PATH) -> Catalogue:
    data = tomllib.loads(path.read_text())
    methods = {}
    for method in data.get("method", []):
        for name in [method["name"], *method.get("aliases", [])]:
            methods[name.lower()] = method
    return Catalogue(
        methods=methods,
        launch_posts={post["model"]: post for post in data.get("launch_post", [])},
        data_sources={source["name"]: source for source in data.get("data_source", [])},
    )


def method_name_of(label: str) -> str:
    """The method a row label names: without the '*' and '(reproduce)' decorations, catalogue-canonical."""
    name = label
    while ROW_DECORATIONS.search(name):
        name = ROW_DECORATIONS.sub("", name)
    known = load_catalogue().method(name)
    return known["name"] if known else name


def method_defaults(name: str) -> dict:
    """Catalogue metadata for a method, as Method field values; 'unclassified' if not catalogued."""
    known = load_catalogue().method(name) or {}
    defaults = {field: known[field] for field in METHOD_FIELDS if field in known}
    defaults.setdefault("kind", "unclassified")
    return defaults
