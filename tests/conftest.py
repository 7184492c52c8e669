"""Test-wide settings."""

import os

import torch

# The suite shares two cores with the streamlit servers and chromium it starts; one torch
# thread per process avoids oversubscription, which slowed model runs up to eightfold here.
torch.set_num_threads(int(os.environ.get("ATLAS_TEST_THREADS", "1")))
os.environ.setdefault("ATLAS_THREADS", os.environ.get("ATLAS_TEST_THREADS", "1"))
