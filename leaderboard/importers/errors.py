"""The error every importer raises for bad input: it names the line, and nothing has been written."""


class ImportFormatError(ValueError):
    """A problem in an input file, located by line number."""

    def __init__(self, problems: list[tuple[int, str]]):
        self.problems = sorted(problems)
        super().__init__("\n".join(f"line {line}: {message}" for line, message in self.problems))

    @classmethod
    def at(cls, line: int, message: str) -> "ImportFormatError":
        return cls([(line, message)])
