# Run ELSPETH 0.7.1 on Python 3.11: libraries from Debian 13 (extracted by setup.sh
# into $ELSPETH_REF071/vendor: SQLAlchemy 2.0, rfc8785, typer, structlog, pluggy,
# tenacity, deepdiff) ahead of Debian 12's dist-packages (numpy, pandas, httpx,
# dynaconf), which come after the interpreter's own (pydantic 2); modules off the
# per-row path of the local examples stubbed (sitecustomize_stub.py).
import os, sys
sys.path.append('/usr/lib/python3/dist-packages')
os.environ.setdefault('STUB_MODULES', 'opentelemetry,textual,pyrate_limiter,azure,chromadb,openai,litellm,langfuse,mcp,html2text,boto3,botocore,ijson')
import sitecustomize_stub  # noqa: F401
