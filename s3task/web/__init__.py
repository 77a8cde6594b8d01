"""The web edge: the HTTP control API under ``/api`` and the local store's signed ``/transfer`` routes.

- :mod:`.api` — the routes and their handlers, :func:`~.api.routes` to mount them
  (into Streamlit's ``st.App``, or :func:`~.api.create_app` on their own);
- :mod:`.models` — every body the API takes or gives, declared once (pydantic);
- :mod:`.openapi` — the operations, and the OpenAPI document generated from them and the models;
- :mod:`.tokens` — the table of hashed bearer tokens;
- :mod:`.transfer` — signed, expiring upload and download URLs for stores without presigned ones;
- :mod:`.errors` — JSON error answers (``{"code", "message"}``) and :func:`~.errors.json_mount`;
- :mod:`.cli` — ``python -m s3task.web`` (also ``python -m s3task.http_api``): tokens, and serving the API.

Nothing here decides a task's state: the handlers call :class:`s3task.tasks.TaskService`.
"""
