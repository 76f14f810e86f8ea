import sys

from trusteval.cli import main

sys.exit(main())
