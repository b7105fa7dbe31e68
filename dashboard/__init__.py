"""The Streamlit dashboard (docs/dashboard.md): `streamlit_app.py` wires the pages in `app_pages/`.

Importing this package imports nothing from Streamlit; `rageval dashboard` uses it only
to find the installed app file.
"""
