"""The domain: the product's own types and pure rules, importing nothing of Django."""
