"""OTLP and LHAR out (export, push) and in (collect, import): GenAI spans <-> zymi events."""
