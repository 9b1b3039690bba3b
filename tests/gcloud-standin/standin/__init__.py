"""The gcloud stand-in's emulation (NOT the Google Cloud SDK), one concept a module; ../gcloud.py
runs it.  See ../README.md."""
