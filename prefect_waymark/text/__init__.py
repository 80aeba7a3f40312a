"""Text for people: Markdown cells and escaping (``markdown``), times as a person reads them
(``human_time``), lists of names capped on one line (``lists``). Below every room that writes
views, forms or lines."""
