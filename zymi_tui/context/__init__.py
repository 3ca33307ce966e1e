"""The context engine: knobs and profiles, the ContextBuilder, Layer A from a project, tokens.

Models: the knobs (knobs.py) are a frozen msgspec `Struct` checked by `zymi_tui.project.validation`
(from project.yml, profiles.yml, `--set`); what the builder renders is `@dataclass`es (one `NamedTuple`,
splice.py's `Segment`, is unpacked by its callers).
"""
