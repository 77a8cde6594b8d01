"""``streamlit run tests/apps/streamlit_api_app.py``: a Streamlit page plus the s3task API, one process.

This is how the product's ``app.py`` mounts the API: ``st.App(<page>, routes=routes(settings))``.
Settings come from ``S3TASK_*`` (the test points ``S3TASK_STORE`` at a temp dir and
``S3TASK_API_TOKENS_FILE`` at a tokens file).
"""

from pathlib import Path

import streamlit as st

from s3task.config import Settings
from s3task.http_api import routes

app = st.App(Path(__file__).with_name("api_page.py"), routes=routes(Settings.load()))
