"""Command line interface: thin commands over the library."""
