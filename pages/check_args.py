"""Placeholder: this workflow's page is being built."""

import streamlit as st

st.title("check_args")
st.info("This workflow is not built yet.")
