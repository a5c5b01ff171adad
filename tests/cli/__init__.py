"""`codescout rank` and its conformance vectors, through the installed command as a subprocess."""
