"""The one place that knows the project: where the store is, which project describes it, what it says.

- `locate`: a STORE argument / `-d DIR` / `--project DIR` -> a typed store location and the project
  folder that describes it (the finder's rules are documented there).
- `reader`: the lenient reader of `project.yml`, `agents/` and `pipelines/` (runtime.context, the
  store setting, agents' prompts, pipelines' steps, their levels and optional inputs).
- `yamlfile`, `templating`, `levels`: what the engine's validating loader shares with the reader.
- `validation`: a parsed YAML document to a msgspec struct, as zymi's serde loader reads it, and a
  refusal worded for a person (the key path, what was expected, what was given).
- `errors`: `ProjectError`.

Models: settings read from a user's file are msgspec `Struct`s made by `validation.convert` (declared
where they are used: engine/config.py, context/knobs.py, replay/costs.py); values made here are
`@dataclass`es, and `Located` a `NamedTuple` its callers unpack.

Layer: above `events`, below `context`.
"""
