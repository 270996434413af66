import sys

from wheelgate.cli import main

sys.exit(main())
