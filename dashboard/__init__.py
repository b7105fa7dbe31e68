"""The Streamlit dashboard (docs/dashboard.md): `streamlit_app.py` wires the pages in `app_pages/`.

Importing this package imports nothing from Streamlit; `rageval dashboard` only locates
the installed app file through it (the library never imports `dashboard`).
"""
