"""The Prefect server waymark talks to outside a flow run: the local one it starts once and
every later run reuses (``local``), the API a command reports to, and its headers."""
