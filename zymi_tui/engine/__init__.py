"""zymi-tui's agent engine: loads a zymi project, runs its pipelines and records what zymi records.

Models: what a project's YAML files say is a msgspec `Struct` (config.py), made by
`zymi_tui.project.validation.convert` as zymi's loader reads it; what the engine makes as it runs is a
`@dataclass`. The events it records are the events layer's types.
"""
