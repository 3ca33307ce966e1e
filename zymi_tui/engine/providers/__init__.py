"""LLM providers (docs/engine.md#providers): OpenAI-compatible, Anthropic, and the offline demo model."""

from __future__ import annotations

from zymi_tui.engine.config import LlmConfig
from zymi_tui.engine.providers.base import Provider, ProviderError
from zymi_tui.errors import UserError

OPENAI_COMPATIBLE = {
    "openai": "https://api.openai.com/v1",
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "together": "https://api.together.xyz/v1",
}


class ProviderConfigError(UserError):
    """A provider configuration that cannot be used (unknown provider, missing key); one line."""

    title = "Provider"


def build_provider(config: LlmConfig) -> Provider:
    """One provider for the whole runtime; the errors are zymi's runtime-build messages."""
    name = config.provider
    if name == "demo":
        from zymi_tui.engine.providers.demo import DemoProvider

        return DemoProvider(config.model or "demo")
    if not config.model:
        raise ProviderConfigError("failed to create LLM provider: invalid LLM config: `llm.model` is required")
    if name in OPENAI_COMPATIBLE:
        from zymi_tui.engine.providers.openai import OpenAIProvider

        return OpenAIProvider(config.model, config.base_url or OPENAI_COMPATIBLE[name], config.api_key, config.stream)
    if name == "anthropic":
        if config.stream:
            raise ProviderConfigError(
                "failed to create LLM provider: `stream: true` is only supported for OpenAI-compatible providers"
            )
        if not config.api_key:
            raise ProviderConfigError(
                "failed to create LLM provider: Anthropic provider requires an api_key "
                "(set `api_key: ${env.ANTHROPIC_API_KEY}`, or use `provider: demo` to try zymi-tui offline)"
            )
        from zymi_tui.engine.providers.anthropic import AnthropicProvider

        return AnthropicProvider(config.model, config.base_url or "https://api.anthropic.com/v1", config.api_key)
    raise ProviderConfigError(
        "failed to create LLM provider: invalid LLM config: "
        f"llm.provider: unknown provider `{name}` — expected one of: openai, anthropic, ollama, vllm, together "
        "(or demo, zymi-tui's offline model)"
    )


__all__ = ["Provider", "ProviderConfigError", "ProviderError", "build_provider"]
