"""Fork-resume in the dashboard: the fork modal, the parent/fork comparison and the hook the dashboard calls."""
