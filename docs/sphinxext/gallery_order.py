"""Order of the example gallery: the scripts that draw figures first, then by file name."""


class FiguresFirst:
    """Sort key for sphinx-gallery's ``within_subsection_order``: ``plot_*`` files first."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[bool, str]:
        return (not filename.startswith("plot_"), filename)

    def __repr__(self) -> str:  # sphinx-gallery shows it in its configuration summary
        return f"{type(self).__name__}()"
