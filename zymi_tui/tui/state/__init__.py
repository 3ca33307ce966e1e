"""What the dashboard shows, as plain data without widgets or IO: events list, graph, inspector, plot."""
