"""How ingestion's jobs run, beside what they do: a job's claim on its rows (claims), the lane its messages go
to (lanes), a crawl's backlog of pages still to publish (backlog), where a long job has got to (progress), an
index job storing while it embeds (store_behind), and the sweeper that puts back what a dead worker left in
flight (sweeper). The tasks themselves stay in ingestion/tasks.py, where Celery finds them by name.
"""
