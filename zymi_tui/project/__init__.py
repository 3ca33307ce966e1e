"""The one place that knows the project: where the store is, which project describes it, what it says.

- `locate`: a STORE argument / `-d DIR` / `--project DIR` -> a typed store location and the project
  folder that describes it (the finder's rules are documented there).
- `reader`: the lenient reader of `project.yml`, `agents/` and `pipelines/` (runtime.context, the
  store setting, agents' prompts, pipelines' steps, their levels and optional inputs).
- `yamlfile`, `templating`, `levels`: what the engine's validating loader shares with the reader.
- `errors`: `ProjectError`.

Layer: above `events`, below `context`.
"""
