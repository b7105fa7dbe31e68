"""A stand-in page for auth tests: the gate, then data a stranger must never see."""

import pandas as pd
import plotly.express as px
import streamlit as st

from dashboard.auth import require_access

require_access()
st.markdown("run 20250101-000000-secret-run")
st.dataframe(pd.DataFrame({"question_id": ["q1"], "recall_at_5": [0.5]}))
st.plotly_chart(px.bar(x=["a"], y=[1]))
