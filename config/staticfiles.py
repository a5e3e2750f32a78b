"""The static files storage of deployments: whitenoise's compressed, hashed files, with the admin UI's ES
modules (sources/static/app/) importing each other by their hashed names. Django leaves `import ... from
"./x.js"` alone unless asked, and a hashed module that imports an unhashed sibling could meet an older or
newer copy of it than the one it was built with."""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
