"""Provider-faithful prefix-cache simulators driven by the replay clock."""
