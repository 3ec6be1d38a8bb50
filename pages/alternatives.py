"""Placeholder: this workflow's page is being built."""

import streamlit as st

st.title("alternatives")
st.info("This workflow is not built yet.")
