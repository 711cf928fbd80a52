"""Validates het-run --emit-k8s manifests: the Volcano Job against
volcano-job-v1alpha1.schema.json (jsonschema), and each task's pod template
against Kubernetes' own OpenAPI schema (kubernetes-validate, strict: unknown
fields are errors). Prints one line per manifest; exits 1 on the first
violation, naming the manifest, the task and the field.

usage: validate_k8s.py SCHEMA.json MANIFEST.yaml...
"""
import json
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES = "1.31.0"

schema = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    job = yaml.safe_load(open(path))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(job), key=str)
    if errors:
        e = errors[0]
        sys.exit(f"{path}: Volcano Job: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    tasks = job["spec"]["tasks"]
    for task in tasks:
        template = {"apiVersion": "v1", "kind": "PodTemplate",
                    "metadata": {"name": f"{job['metadata']['name']}-{task['name']}"},
                    "template": task["template"]}
        try:
            kubernetes_validate.validate(template, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as e:
            sys.exit(f"{path}: task {task['name']}: pod template: "
                     f"{'/'.join(map(str, e.path))}: {e.message}")
    pods = sum(t["replicas"] for t in tasks)
    print(f"{path.split('/')[-1]}: valid Volcano Job, {len(tasks)} tasks, {pods} pods "
          f"(pod templates valid for Kubernetes {KUBERNETES})")
