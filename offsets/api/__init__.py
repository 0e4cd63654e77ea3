"""The REST API (/api/v1/): thin DRF views; one module per area, wired in urls.py."""
