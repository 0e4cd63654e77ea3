"""The per-commit history: Parquet files, one folder per refresh run, under each cluster.

files.py     the layout on disk: folder names, the read tasks' writes, merging run folders
             (pyarrow only: Spark's Python workers import it)
store.py     where a cluster's history lives, and its upkeep after each refresh
reading.py   one source partition's commits, for the charts
"""
