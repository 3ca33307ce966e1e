"""The dashboard (`zymi-tui observe`'s main screen), one responsibility a module, each a layer of one class chain:
state -> loaders (workers) -> panels (what is drawn) -> selection -> results (workers' messages) -> filters ->
search -> launchers (other screens) -> screen (`MainScreen`: its actions, layout and start)."""
