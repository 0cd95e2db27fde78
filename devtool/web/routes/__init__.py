"""One module per page of the DevTool."""
