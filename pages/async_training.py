"""Placeholder: this workflow's page is being built."""

import streamlit as st

st.title("async_training")
st.info("This workflow is not built yet.")
