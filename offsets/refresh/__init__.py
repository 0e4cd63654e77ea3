"""The refresh: read Connect's topics with Spark, compute offsets, history and lag, store them."""
