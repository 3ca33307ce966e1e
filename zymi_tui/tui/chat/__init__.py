"""The chat screen: talk to a project's agent through our engine and watch its context grow."""
