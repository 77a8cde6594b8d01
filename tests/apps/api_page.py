"""The page the test Streamlit app shows: proof that the UI still runs next to the API."""

import streamlit as st

st.title("s3task API test app")
