"""The REST API of checks, one module per resource."""
