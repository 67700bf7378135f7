# The workmem API and worker image. Used by docker-compose.yml.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /srv/workmem
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
RUN pip install --no-cache-dir -e .
RUN useradd --system --uid 10001 workmem
USER workmem
EXPOSE 8000
CMD ["workmem", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
