"""Page-data builders: what each page and fragment shows, read from the store as plain data.

They know nothing of HTTP: no Starlette, no Jinja2, no request (tests/test_layers.py checks it).
URL-state builders take a mapping of query values; the endpoints in `devtool.web.routes` call these
and hand the results to the templates.
"""
