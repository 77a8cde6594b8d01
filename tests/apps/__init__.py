"""Helper apps and servers for the HTTP API and transfer tests."""
