"""The schema of a zymi project's YAML files (docs/engine.md#project-file), as msgspec structs.

A document becomes a struct through `zymi_tui.project.validation.convert`: strictly, as zymi's serde loader
reads it (integers are integers, within their Rust type's bounds; a plain scalar where a string is wanted
is that string, except in the structs marked `EXACT_TYPES`), and a refusal names the key path and what
was wrong. Unknown keys are ignored everywhere, as zymi does. Fields zymi parses but never uses are kept
so that a project written for zymi loads unchanged.
"""

# No `from __future__ import annotations`: msgspec reads these annotations as objects made when each class
# is; as strings it would compile and evaluate every one (`typing.ForwardRef`) at a run's first
# project load. Every class here names only classes defined above it.

from typing import Annotated, Any, ClassVar, Literal

from msgspec import Meta, Struct, field

from zymi_tui.project.validation import Refused, convert

U32 = Annotated[int, Meta(ge=0, le=2**32 - 1)]  # zymi's u32 fields
U64 = Annotated[int, Meta(ge=0)]  # zymi's u64 and usize fields (msgspec bounds stop at int64)
EXACT = "zymi reads it through a buffered enum: a string must be a string (zymi_tui.project.validation)"


class LlmConfig(Struct, kw_only=True):
    EXACT_TYPES: ClassVar[str] = EXACT

    provider: str
    model: str = ""
    base_url: str | None = None
    api_key: str | None = None
    stream: bool = False


class Defaults(Struct, kw_only=True):
    timeout_secs: U64 = 30
    max_iterations: U64 = 10
    max_tokens: U32 = 4096


class PolicyConfig(Struct, kw_only=True):
    enabled: bool = False
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    require_approval: list[str] = field(default_factory=list)


class FileWriteContract(Struct, kw_only=True):
    allowed_dirs: list[str] = field(default_factory=list)
    deny_patterns: list[str] = field(default_factory=list)


class Contracts(Struct, kw_only=True):
    file_write: FileWriteContract = field(default_factory=FileWriteContract)


class ShellRuntime(Struct, kw_only=True):
    idle_timeout_seconds: U64 = 600
    max_sessions: U64 = 32
    shell_path: str = "/bin/bash"
    interactive: bool = False
    sandbox: bool = True  # zymi-tui's: run the shell in bubblewrap where it works (engine/sandbox.py)
    network: bool = False  # zymi-tui's: the sandboxed shell may reach the network


class RuntimeConfig(Struct, kw_only=True):
    shell: ShellRuntime = field(default_factory=ShellRuntime)
    context: dict[str, Any] = field(default_factory=dict)  # the knobs (context/knobs.py); null refused, as zymi does


class ProjectConfig(Struct, kw_only=True):
    name: str
    schema_version: str | None = None
    version: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    llm: str | dict[str, Any] | None = None  # an inline mapping is read by `inline_llm`
    defaults: Defaults = field(default_factory=Defaults)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    contracts: Contracts = field(default_factory=Contracts)
    runtime: RuntimeConfig | None = None
    connectors: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    default_approval_channel: str | None = None
    store: str | None = None


class AgentConfig(Struct, kw_only=True):
    name: str
    description: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    tools: list[str] = field(default_factory=list)
    max_iterations: U64 | None = None
    max_tokens: U32 | None = None
    timeout_secs: U64 | None = None
    policy: PolicyConfig | None = None


class PipelineInput(Struct, kw_only=True):
    name: str
    type: Literal["string", "integer", "number", "boolean", "object", "array"] = "string"
    required: bool = False
    description: str | None = None


class StepContext(Struct, kw_only=True):
    mode: Literal["inherit", "fresh"] = "inherit"


class StepConfig(Struct, kw_only=True):
    id: str
    agent: str | None = None
    task: str | None = None
    tool: str | None = None
    args: Any = None
    ask: str | None = None
    channel: str | None = None
    depends_on: list[str] = field(default_factory=list)
    when: str | None = None
    context: StepContext = field(default_factory=StepContext)

    @property
    def kind(self) -> Literal["agent", "tool", "ask"]:
        if self.ask is not None:
            return "ask"
        return "tool" if self.tool is not None else "agent"


class OutputConfig(Struct, kw_only=True):
    EXACT_TYPES: ClassVar[str] = EXACT

    step: str | None = None
    any_of: list[str] | None = None


class PipelineConfig(Struct, kw_only=True):
    name: str
    description: str | None = None
    inputs: list[PipelineInput] = field(default_factory=list)
    steps: list[StepConfig]
    output: OutputConfig | None = None
    approval_channel: str | None = None

    def step(self, step_id: str) -> StepConfig | None:
        return next((s for s in self.steps if s.id == step_id), None)


class HttpImpl(Struct, kw_only=True, tag_field="kind", tag="http"):
    EXACT_TYPES: ClassVar[str] = EXACT

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body_template: str | None = None


class ShellImpl(Struct, kw_only=True, tag_field="kind", tag="shell"):
    EXACT_TYPES: ClassVar[str] = EXACT

    command_template: str
    timeout_secs: U64 | None = 30  # null as zymi takes it (recorded as given)


class ToolConfig(Struct, kw_only=True):
    name: str
    description: str
    parameters: Any
    implementation: HttpImpl | ShellImpl
    requires_approval: bool | None = None
    no_resume: bool | None = None


def inline_llm(project: ProjectConfig) -> LlmConfig | None:
    """project.yml's `llm:` when it is an inline mapping (not `use:` a named provider, not a name), as zymi
    reads it: `provider` and `model` required (`model` may be left out for zymi-tui's `demo` provider).
    Raises `Refused` with the key path from `llm`."""
    llm = project.llm
    if not isinstance(llm, dict) or "use" in llm:
        return None
    try:
        config = convert(llm, LlmConfig)
    except Refused as e:
        raise Refused(f"llm.{e.path}" if e.path else "llm", e.problem) from None
    if "model" not in llm and config.provider != "demo":
        raise Refused("llm", "missing field `model`")
    return config
