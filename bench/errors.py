"""Errors a user can cause and fix. The CLI prints them as one line naming the thing and the fix."""


class UserError(Exception):
    pass


class DataError(UserError):
    """Malformed or missing dataset input."""


class ConfigError(UserError):
    """Invalid experiment configuration."""
